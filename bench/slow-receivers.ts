// Slow webhook receivers for `npm run bench:alerts`, in a process of their own (forked by
// bench/alerts.ts), so that their work is not counted as the platform's CPU and does not share its
// event loop, as real receivers would not. Arguments: how many, and how long each waits before it
// answers 204, ms. Sends {ports} once listening; answers {count} (requests received) to 'count'.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const [countText = '100', delayText = '2000'] = process.argv.slice(2);
const delayMs = Number(delayText);
let received = 0;

const ports: number[] = [];
for (let i = 0; i < Number(countText); i++) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      setTimeout(() => res.writeHead(204).end(), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ports.push((server.address() as AddressInfo).port);
}
process.send?.({ ports });
process.on('message', (message) => {
  if (message === 'count') process.send?.({ count: received });
  if (message === 'exit') process.exit(0);
});
