#!/usr/bin/env python3
"""A few Redis commands over a raw socket, binary-safe, for tools/tests/remote_cache.sh (the
Debian image has redis-cli, whose --raw output is not byte-exact, and no Python redis module).

  resp.py PORT get KEY FILE          the value of KEY into FILE (exit 1 when there is none)
  resp.py PORT set KEY FILE          SET KEY to FILE's bytes
  resp.py PORT resign KEY TEAMKEY WHAT
      rewrite the coil entry at KEY and sign it again with the team key (64 hex digits in the
      file TEAMKEY), as a holder of the key could: WHAT is "version" (the header names another
      plugin version) or "extra" (bytes after the last file)
  resp.py PORT fake MODE             a fake server on PORT: "garbage" answers every command with
      bytes that are not RESP; "drop" reads a command and closes the connection
  resp.py PATH fake pipe             a fake server on the Unix socket PATH that answers a fetch
      (GETRANGE) with a miss and a publish's EXISTS with 0, then closes the connection before the
      SET arrives: the client's next write gets EPIPE, which raises SIGPIPE unless it is held off
  resp.py PORT fake flood            answers every command with a 2 GB bulk string's header and
      then bytes for as long as the client reads them
"""
import hashlib
import socket
import struct
import sys


def command(port, *args):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    f = s.makefile("rb")
    line = f.readline()
    if line.startswith(b"$"):
        n = int(line[1:])
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data
    if line.startswith(b"-"):
        raise SystemExit("redis: " + line.decode().strip())
    return line.strip()


def mac(key, data):
    return hashlib.blake2b(b"coil remote entry 1" + data, key=key, digest_size=32).digest()


def resign(port, name, keyfile, what):
    key = bytes.fromhex(open(keyfile).read().strip())
    blob = command(port, "GET", name)
    body = blob[:-32]
    assert mac(key, body) == blob[-32:], "the entry's MAC does not check with this key"
    if what == "version":
        h = struct.unpack("<I", body[48:52])[0]
        header = body[52:52 + h]
        lines = [b"version 99.0.0" if l.startswith(b"version ") else l for l in header.split(b"\n")]
        header = b"\n".join(lines)
        body = body[:48] + struct.pack("<I", len(header)) + header + body[52 + h:]
    elif what == "extra":
        body = body + b"\0" * 7
    command(port, "SET", name, body + mac(key, body))


def fake(where, mode):
    if mode == "pipe":
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(where)
    else:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", int(where)))
    srv.listen(16)
    print("ready", flush=True)
    while True:
        c, _ = srv.accept()
        try:
            c.settimeout(5)
            if mode == "flood":
                c.recv(65536)
                c.sendall(b"$2000000000\r\n")
                chunk = b"x" * 65536
                sent = 0
                while sent < 2000000000:
                    c.sendall(chunk)
                    sent += len(chunk)
                continue
            while True:
                got = c.recv(65536)
                if mode == "garbage":
                    c.sendall(b"HTTP/1.1 200 OK\r\n\r\nhello\r\n")
                if mode != "pipe" or not got:
                    break
                if b"GETRANGE" in got:
                    c.sendall(b"$0\r\n\r\n")
                elif b"EXISTS" in got:
                    c.sendall(b":0\r\n")
                    print("closed before the SET", flush=True)
                    break
                else:
                    c.sendall(b"-ERR not this fake's\r\n")
        except OSError:
            pass
        c.close()


def main():
    where, op = sys.argv[1], sys.argv[2]
    if op == "fake":
        fake(where, sys.argv[3])
        return
    port = int(where)
    if op == "get":
        v = command(port, "GET", sys.argv[3])
        if v is None:
            sys.exit(1)
        open(sys.argv[4], "wb").write(v)
    elif op == "set":
        command(port, "SET", sys.argv[3], open(sys.argv[4], "rb").read())
    elif op == "resign":
        resign(port, sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        sys.exit("unknown operation " + op)


if __name__ == "__main__":
    main()
