// Entry point: config -> node -> listen; SIGTERM/SIGINT = graceful shutdown.
import { ConfigError, loadConfig } from './config.js';
import { isFirkinError } from './core/errors.js';
import { createLogger, startNode } from './node.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, process.argv.slice(2));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`firkin: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config);
  let node;
  try {
    node = await startNode(config, { log });
  } catch (err) {
    // Operating errors at start (port in use, data dir locked) get one line, not a stack.
    const message = isFirkinError(err) || (err as NodeJS.ErrnoException).code !== undefined ? (err as Error).message : undefined;
    if (message === undefined) throw err;
    log.fatal({ err: message }, 'cannot start');
    process.stderr.write(`firkin: cannot start: ${message}\n`);
    process.exit(1);
  }
  const adminKey =
    config.auth.disabled ? 'auth disabled' : node.adminKeyFile === undefined ? 'admin key from SERVICE_ADMIN_KEY' : `admin key in ${node.adminKeyFile}`;
  log.info(
    { url: node.url, dataDir: config.dataDir, adminKeyFile: node.adminKeyFile },
    `firkin listening on ${node.url ?? '(HTTP disabled)'} with data in ${config.dataDir}; ${adminKey}`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    node.close().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

void main();
