// Runs the s3rver emulator in its own process. s3rver signs list continuation tokens with DES,
// which Node's OpenSSL 3 offers only under --openssl-legacy-provider; keeping it in a child
// process confines that flag to the emulator. Prints {"port": n} once listening.
import S3rver from 's3rver';

const [directory, port = '0'] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: Number(port), silent: true, directory });
const { port: bound } = await server.run();

// Requests by S3 operation, for the bench: the parent asks over IPC ('snapshot' / 'reset').
let counts = {};
server.httpServer.on('request', (req) => {
  const url = new URL(req.url ?? '/', 'http://local');
  const [, , ...key] = url.pathname.split('/');
  const object = key.join('/') !== '';
  const operation = object
    ? { GET: 'GetObject', HEAD: 'HeadObject', PUT: 'PutObject', DELETE: 'DeleteObject', POST: 'PostObject' }[req.method ?? ''] ?? req.method
    : req.method === 'GET'
      ? 'ListObjects'
      : `${req.method} bucket`;
  counts[operation] = (counts[operation] ?? 0) + 1;
});
process.on('message', (message) => {
  if (message === 'reset') counts = {};
  if (message === 'snapshot') process.send?.({ snapshot: counts });
});
process.stdout.write(`${JSON.stringify({ port: bound })}\n`);
const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('disconnect', stop);
