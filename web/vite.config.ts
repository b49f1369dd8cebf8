import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Relative asset URLs resolve against the page's <base href>, which the server sets to wherever
// the app is reached (/admin/ or /pay/, or under PUBLIC_BASE_PATH), so one build serves every deployment.
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
    // Two pages, one build: the admin app (index.html) and the payment page (pay.html).
    rollupOptions: {
      input: {
        admin: fileURLToPath(new URL('index.html', import.meta.url)),
        pay: fileURLToPath(new URL('pay.html', import.meta.url)),
      },
    },
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
