// Preloaded (NODE_OPTIONS=--import) into a service process by a test: a promise rejects with nobody
// listening, a few seconds after start-up, as a bug in some background path would.
setTimeout(() => {
  void Promise.reject(new Error('an unexpected rejection (test)'));
}, Number(process.env['HIPPO_TEST_REJECT_AFTER_MS'] ?? 3000)).unref();
