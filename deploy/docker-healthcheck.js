#!/usr/bin/env node
// Docker HEALTHCHECK for every role of the image (see Dockerfile). Exit 0 when the role's
// GET /api/health answers 200, 1 otherwise (503 while Redis is unreachable or while draining).
// The role comes from the first argument, else from the container's main process command line.
// One-shot roles (`keys …`) have nothing to check and always pass.
'use strict';
const { readFileSync } = require('node:fs');
const http = require('node:http');

function roleOfMainProcess() {
  try {
    const args = readFileSync('/proc/1/cmdline', 'utf8').split('\0');
    const main = args.findIndex((arg) => arg.endsWith('main.js'));
    return main >= 0 ? (args[main + 1] ?? 'gateway') : 'gateway';
  } catch {
    return 'gateway';
  }
}

function portFor(role, env) {
  switch (role) {
    case 'gateway':
    case 'start':
      return Number(env.PORT || 4001);
    case 'account-api':
      return Number(env.ACCOUNT_PORT || 4002);
    default:
      return undefined;
  }
}

const role = process.argv[2] || roleOfMainProcess();
const port = portFor(role, process.env);
if (port === undefined) process.exit(0);
const host =
  !process.env.HOST || ['0.0.0.0', '::'].includes(process.env.HOST) ? '127.0.0.1' : process.env.HOST;

const req = http.get({ host, port, path: '/api/health', timeout: 2500 }, (res) => {
  res.resume();
  process.exitCode = res.statusCode === 200 ? 0 : 1;
  if (res.statusCode !== 200) process.stderr.write(`${role} /api/health answered ${res.statusCode}\n`);
});
req.on('timeout', () => req.destroy(new Error('timed out')));
req.on('error', (error) => {
  process.stderr.write(`${role} /api/health: ${error.message}\n`);
  process.exitCode = 1;
});
