// A tiny webhook receiver for the local quick start: prints every call it gets.
const http = require('node:http');
const port = Number(process.env.DEMO_RECEIVER_PORT || 3999);
http
  .createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const h = req.headers;
      console.log(
        `webhook ${req.method} ${req.url} job=${h['tickwork-job-id']} fence=${h['tickwork-fence-token']} scheduled_for=${h['tickwork-scheduled-for']} body=${body}`,
      );
      res.end('ok');
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`demo webhook receiver on http://127.0.0.1:${port}/hook`));
