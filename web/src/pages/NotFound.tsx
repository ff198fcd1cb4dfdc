import { navigate } from "../router";
import { useSession } from "../session";

/**
 * What a user sees for a model or analysis they cannot fetch. The server answers 404 both for
 * "does not exist" and "not shared with you", so this page cannot (and does not) tell them apart.
 */
export function NotFound({ status = 404, what = "page", modelId }: { status?: number; what?: "model" | "analysis" | "page"; modelId?: string }) {
  const session = useSession();
  const home = (
    <a href="/" onClick={(e) => (e.preventDefault(), navigate("/"))} data-testid="back-home">
      Back to your models
    </a>
  );
  if (status === 401)
    return (
      <main className="page not-found" data-testid="not-found" data-status="401">
        <h1>Sign in to see this</h1>
        <p>Your session has ended. Sign in again; you will come back to this address.</p>
        <p>
          <button className="primary" onClick={session.signOut} data-testid="sign-in-again">Sign in</button>
        </p>
      </main>
    );
  return (
    <main className="page not-found" data-testid="not-found" data-status="404">
      <h1>{what === "analysis" ? "Analysis not found" : what === "model" ? "Model not found" : "Not found"}</h1>
      {what === "model" && (
        <p>
          There is no model at this address that you can see. It may have been deleted, or it has not been
          shared with you{session.me ? ` (${session.me.user.email})` : ""}. Ask its owner to share it with you or to turn on link sharing.
        </p>
      )}
      {what === "analysis" && (
        <p>
          This model has no such analysis. It may have been deleted.{" "}
          {modelId && (
            <a href={`/m/${encodeURIComponent(modelId)}`} onClick={(e) => (e.preventDefault(), navigate(`/m/${encodeURIComponent(modelId)}`))}>
              Open the model
            </a>
          )}
        </p>
      )}
      {what === "page" && <p>Nothing lives at this address.</p>}
      <p>{home}</p>
    </main>
  );
}
