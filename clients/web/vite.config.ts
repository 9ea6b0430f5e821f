import { defineConfig } from "vite";

// The page calls the API on its own origin (the engine's web port serves both).
// `npm run dev` proxies those paths to `battleline serve` (web port 8080), or to BATTLELINE_WEB.
const api = process.env.BATTLELINE_WEB ?? "http://127.0.0.1:8080";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../../services/gateway/battleline_gateway/site",
    emptyOutDir: true,
    target: "es2022",
  },
  server: {
    proxy: { "/battleline.v1.": { target: api, changeOrigin: true } },
  },
});
