import { statfs } from "node:fs/promises";

// statfs f_type magics of network filesystems (linux/magic.h): watching them is unreliable and slow.
const NETWORK_FS = new Set([0x6969 /* NFS */, 0xff534d42 /* CIFS */, 0xfe534d42 /* SMB2 */, 0x517b /* SMB */,
  0x564c /* NCP */, 0x01021997 /* V9FS */, 0x65735546 /* FUSE */, 0x47504653 /* GPFS */, 0x19830326 /* FHGFS */]);

export async function isNetworkMount(path: string): Promise<boolean> {
  try {
    const s = await statfs(path);
    return NETWORK_FS.has(s.type >>> 0);
  } catch {
    return false;
  }
}
