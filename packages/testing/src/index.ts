export * from './redis-server';
export * from './gateway';
export * from './ws-client';
export * from './process';
export * from './chromium';
export * from './wait';
export * from './haproxy';
export * from './ports';
