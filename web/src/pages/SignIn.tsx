import { useState } from "react";
import { auth } from "../api/client";
import type { Me } from "../api/types";

/** Sign in (or create an account where the server allows sign-up). */
export function SignInPage({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  const [mode, setMode] = useState<"login" | "signup">("login");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main className="page signin">
      <h1>Edgescope</h1>
      <form
        className="signin-form"
        aria-label={mode === "login" ? "Sign in" : "Create an account"}
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            onSignedIn(mode === "login" ? await auth.login(email, password) : await auth.signup(email, password, name));
          } catch (err) {
            setError((err as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        <h2>{mode === "login" ? "Sign in" : "Create an account"}</h2>
        <label>E-mail <input type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} data-testid="email" /></label>
        {mode === "signup" && <label>Name <input value={name} autoComplete="name" onChange={(e) => setName(e.target.value)} /></label>}
        <label>Password <input type="password" autoComplete={mode === "login" ? "current-password" : "new-password"} required value={password} onChange={(e) => setPassword(e.target.value)} data-testid="password" /></label>
        {error && <p className="error" role="alert">{error}</p>}
        <button className="primary" type="submit" disabled={busy} data-testid="sign-in">{mode === "login" ? "Sign in" : "Create account"}</button>
        <button type="button" className="link" onClick={() => setMode(mode === "login" ? "signup" : "login")}>
          {mode === "login" ? "No account? Create one" : "Have an account? Sign in"}
        </button>
      </form>
    </main>
  );
}
