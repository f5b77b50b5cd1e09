// Preloaded (NODE_OPTIONS=--import) into a service process by a test: a promise rejects with nobody
// listening, as a bug in some background path would. It waits until the process is running its
// own code (an unhandledRejection listener is installed) so that it does not race module loading
// on a busy machine; without any listener it rejects after HIPPO_TEST_REJECT_AFTER_MS all the same.
const deadline = Date.now() + Number(process.env['HIPPO_TEST_REJECT_AFTER_MS'] ?? 10_000);
const poll = setInterval(() => {
  if (process.listenerCount('unhandledRejection') === 0 && Date.now() < deadline) return;
  clearInterval(poll);
  // A moment later, so the rejection comes from a running service, not from its start-up.
  setTimeout(() => void Promise.reject(new Error('an unexpected rejection (test)')), 200);
}, 50);
poll.unref();
