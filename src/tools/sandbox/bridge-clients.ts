/**
 * The in-sandbox clients of the tool bridge (plan §8.5), seeded next to the program as
 * `.agent/agent_tools.py` and `.agent/agent_tools.js`. Standard library only. The program calls
 * `call("math.calculate", {"expression": "2+2"})` (or `tools()` for the list); the socket and the
 * token come from `AGENT_BRIDGE_SOCKET` / `AGENT_BRIDGE_TOKEN`, set by the execution service.
 * A refused or failed call raises (Python `ToolError`, JavaScript `Error` with `.errorCode`).
 */
export const PYTHON_CLIENT = `import json, os, socket

class ToolError(Exception):
    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code

_sock = None
_file = None
_next = 0

def _rpc(method, params):
    global _sock, _file, _next
    if _sock is None:
        _sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _sock.connect(os.environ["AGENT_BRIDGE_SOCKET"])
        _file = _sock.makefile("rwb")
    _next += 1
    params = dict(params, token=os.environ["AGENT_BRIDGE_TOKEN"])
    _file.write((json.dumps({"jsonrpc": "2.0", "id": _next, "method": method, "params": params}) + "\\n").encode())
    _file.flush()
    reply = json.loads(_file.readline())
    if "error" in reply:
        e = reply["error"]
        raise ToolError((e.get("data") or {}).get("errorCode", str(e.get("code"))), e.get("message", ""))
    return reply["result"]

def call(name, arguments=None):
    return _rpc("tools.call", {"name": name, "arguments": arguments or {}})

def tools():
    return _rpc("tools.list", {})["tools"]
`;

export const JAVASCRIPT_CLIENT = `'use strict';
const net = require('net');
let conn = null;
let buf = '';
let next = 0;
const waiting = new Map();
function connect() {
  if (conn) return conn;
  conn = net.connect(process.env.AGENT_BRIDGE_SOCKET);
  conn.setEncoding('utf8');
  conn.on('data', (d) => {
    buf += d;
    for (let nl = buf.indexOf('\\n'); nl >= 0; nl = buf.indexOf('\\n')) {
      const reply = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      const w = waiting.get(reply.id);
      waiting.delete(reply.id);
      if (reply.error) {
        const e = new Error(reply.error.message);
        e.errorCode = (reply.error.data || {}).errorCode || String(reply.error.code);
        w.reject(e);
      } else w.resolve(reply.result);
    }
    if (waiting.size === 0) conn.unref();
  });
  return conn;
}
function rpc(method, params) {
  const id = ++next;
  const c = connect();
  c.ref();
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    c.write(JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, token: process.env.AGENT_BRIDGE_TOKEN } }) + '\\n');
  });
}
exports.call = (name, args) => rpc('tools.call', { name, arguments: args || {} });
exports.tools = async () => (await rpc('tools.list', {})).tools;
`;
