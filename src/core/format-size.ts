// A size in bytes as people read it ("512 B", "14 KB", "2.5 MB"): the attachment lines the model
// reads, tools' notes and chat uploads say sizes the same way.

/** "12 KB", "3.4 MB" (binary units, as the limits are set). */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MB`;
}
