// Runs the s3rver emulator in its own process. s3rver signs list continuation tokens with DES,
// which Node's OpenSSL 3 offers only under --openssl-legacy-provider; keeping it in a child
// process confines that flag to the emulator. Prints {"port": n} once listening.
import S3rver from 's3rver';

const [directory, port = '0'] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: Number(port), silent: true, directory });

// What S3 does and s3rver 3.7 does not: keys over 1,024 bytes are refused (KeyTooLongError), and
// a PutObject with If-Match writes only over that ETag (412 PreconditionFailed, 404 NoSuchKey when
// the object is gone), one with If-None-Match: * only where there is none. Requests for one object are served one at a time, from the first byte in to
// the last byte out, so the check and the write are atomic and no read sees half a write. And a
// CopyObject's source (x-amz-copy-source) is URL-decoded whole, as S3 does: s3rver decodes it with
// decodeURI, which leaves `%2B`, `%23`, `%3F`… encoded, so it is handed the form decodeURI undoes.
const maxKeyBytes = 1024;
const queues = new Map();
const unquote = (etag) => etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
const refuse = (ctx, status, code, message) => {
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
};
server.middleware.unshift(async (ctx, next) => {
  const match = /^\/([^/]+)\/(.+)$/.exec(ctx.path);
  if (!match) return next();
  const [, bucket, encodedKey] = match;
  const copySource = ctx.get('x-amz-copy-source');
  if (copySource) {
    try {
      ctx.request.headers['x-amz-copy-source'] = encodeURI(decodeURIComponent(copySource));
    } catch {
      // Not URL-encoded as S3 requires: left for s3rver to refuse.
    }
  }
  const key = decodeURIComponent(encodedKey);
  if (Buffer.byteLength(key, 'utf8') > maxKeyBytes) {
    return refuse(ctx, 400, 'KeyTooLongError', 'Your key is too long');
  }
  const id = `${bucket}/${key}`;
  const before = queues.get(id) ?? Promise.resolve();
  const closed = new Promise((resolve) => ctx.res.once('close', resolve));
  const turn = before.then(() => closed);
  queues.set(id, turn);
  void turn.then(() => {
    if (queues.get(id) === turn) queues.delete(id);
  });
  await before;
  const ifMatch = ctx.get('if-match');
  // A PutObject with `If-None-Match: *` writes only where no object is (412 when one is), as S3 does.
  if (ctx.method === 'PUT' && ctx.get('if-none-match') === '*' && !ctx.get('x-amz-copy-source')) {
    const existing = await server.store.getMetadata(bucket, key).catch(() => undefined);
    if (existing) return refuse(ctx, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
  }
  const subresource = ['uploadId', 'partNumber', 'tagging', 'acl'].some((name) => name in ctx.query);
  if (ctx.method === 'PUT' && ifMatch && !subresource && !ctx.get('x-amz-copy-source')) {
    const current = await server.store.getMetadata(bucket, key).catch((error) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (!current) return refuse(ctx, 404, 'NoSuchKey', 'The specified key does not exist.');
    if (unquote(current.etag) !== unquote(ifMatch)) {
      return refuse(ctx, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
    }
  }
  await next();
});
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
