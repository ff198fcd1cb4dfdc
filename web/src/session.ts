import { createContext, useContext } from "react";
import type { Me } from "./api/types";

export const SessionContext = createContext<{ me: Me | null; signOut: () => void }>({ me: null, signOut: () => {} });
export const useSession = () => useContext(SessionContext);
