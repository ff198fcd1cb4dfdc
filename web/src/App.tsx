import { ModelListPage } from "./pages/ModelList";
import { ModelPage } from "./pages/ModelPage";
import { navigate, useRoute } from "./router";

export function App() {
  const route = useRoute();
  if (route.page === "list") return <ModelListPage />;
  if (route.page === "model") return <ModelPage key={route.id} id={route.id} />;
  return (
    <main className="page">
      <h1>Not found</h1>
      <p>
        <a href="/" onClick={(e) => (e.preventDefault(), navigate("/"))}>Back to the model list</a>
      </p>
    </main>
  );
}
