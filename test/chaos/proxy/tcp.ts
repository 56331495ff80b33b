// Real TCP on loopback for the proxy tests: an echo server (the listener behind a link) and a
// client (the dialler in front of it), both recording what arrived and when.
import net from 'node:net';

export interface Echo {
  port: number;
  /** Everything each accepted connection received, in order (kept only with `keep`). */
  received: Buffer[];
  /** How many bytes each accepted connection received. */
  bytes: number[];
  sockets: net.Socket[];
  close(): Promise<void>;
}

export async function startEcho(options: { echo?: boolean; keep?: boolean } = {}): Promise<Echo> {
  const echo: Echo = { port: 0, received: [], bytes: [], sockets: [], close: async () => {} };
  const server = net.createServer((s) => {
    const i = echo.received.push(Buffer.alloc(0)) - 1;
    echo.bytes.push(0);
    echo.sockets.push(s);
    s.on('data', (d: Buffer) => {
      if (options.keep ?? true) echo.received[i] = Buffer.concat([echo.received[i]!, d]);
      echo.bytes[i]! += d.length;
      if (options.echo ?? true) s.write(d);
    });
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  echo.port = (server.address() as net.AddressInfo).port;
  echo.close = () =>
    new Promise<void>((resolve) => {
      for (const s of echo.sockets) s.destroy();
      server.close(() => resolve());
    });
  return echo;
}

export interface Client {
  socket: net.Socket;
  received(): string;
  arrivals: { atMs: number; data: string }[];
  closed: Promise<Error | undefined>;
}

export async function connect(port: number): Promise<Client> {
  const socket = net.connect({ host: '127.0.0.1', port });
  let data = '';
  const arrivals: { atMs: number; data: string }[] = [];
  socket.on('data', (d: Buffer) => {
    data += d.toString();
    arrivals.push({ atMs: Date.now(), data: d.toString() });
  });
  let error: Error | undefined;
  socket.on('error', (err) => (error = err));
  const closed = new Promise<Error | undefined>((resolve) => socket.once('close', () => resolve(error)));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => data, arrivals, closed };
}
