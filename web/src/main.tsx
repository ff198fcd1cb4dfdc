import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { adoptEarlyRequests } from "./api/prefetch";
import { parseRoute } from "./router";
import "./styles.css";

const route = parseRoute(location.pathname, location.search);
if (route.page === "model") adoptEarlyRequests(route.id);
createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
