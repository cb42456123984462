// Client routes under /dashboard/: pushState navigation and a hook that re-renders on it and on back/forward.
import { useEffect, useState } from "preact/hooks";

export const BASE = "/dashboard/";

export function navigate(path: string): void {
  history.pushState(null, "", path);
  window.dispatchEvent(new Event("burrow:navigate"));
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    window.addEventListener("popstate", update);
    window.addEventListener("burrow:navigate", update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener("burrow:navigate", update);
    };
  }, []);
  return path;
}
