import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// Flask serves dist/index.html for /, /m/<id>, /m/<id>/a/<analysis> and dist/assets/* at /assets/*.
// `npm run dev` proxies /api to EDGESCOPE_API (default: the mock at testkit/mock_server.py or edgescope serve).
export default defineConfig({
  base: "/",
  plugins: [react()],
  build: { outDir: "dist", assetsDir: "assets", chunkSizeWarningLimit: 900 },
  worker: { format: "es" },
  server: { proxy: { "/api": process.env.EDGESCOPE_API ?? "http://127.0.0.1:8000" } },
  test: { include: ["tests/**/*.test.ts"], environment: "node" },
});
