import { useEffect, useState } from "react";
import { auth } from "./api/client";
import { takeEarlyMe } from "./api/prefetch";
import type { Me } from "./api/types";
import { AccountPage } from "./pages/Account";
import { ModelListPage } from "./pages/ModelList";
import { ModelPage } from "./pages/ModelPage";
import { NotFound } from "./pages/NotFound";
import { SignInPage } from "./pages/SignIn";
import { useRoute } from "./router";
import { SessionContext } from "./session";

export function App() {
  const route = useRoute();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    auth.me(takeEarlyMe()).then(setMe, (e) => setError(e.message));
  }, []);
  if (error) return <main className="page"><p className="error" role="alert">Cannot reach the server: {error}</p></main>;
  if (me === undefined) return <main className="page"><p className="muted">Loading…</p></main>;
  if (me === null) return <SignInPage onSignedIn={setMe} />;
  const signOut = () => auth.logout().then(() => setMe(null));
  let page;
  if (route.page === "list") page = <ModelListPage />;
  else if (route.page === "account") page = <AccountPage />;
  else if (route.page === "model") page = <ModelPage key={route.id} id={route.id} analysisId={route.analysis} />;
  else page = <NotFound />;
  return <SessionContext.Provider value={{ me, signOut }}>{page}</SessionContext.Provider>;
}
