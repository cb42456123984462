// A program for a sandbox that stands in for a WebSocket server: the suites check that an upgraded connection reaches
// a sandbox through another node, and Python in the base template needs no package for this.

/** Switches protocols on any request to port 8001, then echoes what it gets upper-cased (framing aside). */
export const UPGRADE_ECHO = `
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 8001)); s.listen()
def serve(c):
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        d = c.recv(4096)
        if not d: return
        head += d
    c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n")
    while True:
        d = c.recv(4096)
        if not d: break
        c.sendall(d.upper())
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
`;
