// esbuild bundles imported CSS into the console's stylesheet.
declare module '*.css';
