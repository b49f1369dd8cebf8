import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Relative asset URLs resolve against the page's <base href>, which the server sets to wherever
// the app is reached (/admin/, or under PUBLIC_BASE_PATH), so one build serves every deployment.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // The polyfill would be an inline script, which the admin pages' CSP forbids.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 800,
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
