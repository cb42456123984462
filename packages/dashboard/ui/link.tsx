// An in-app link: a real href (open in a new tab, copy) that navigates with pushState on a plain click.
import type { ComponentChildren } from "preact";
import { navigate } from "./router.js";

export function Link({ href, class: className, children }: { href: string; class?: string; children: ComponentChildren }) {
  const onClick = (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} class={className} onClick={onClick}>
      {children}
    </a>
  );
}
