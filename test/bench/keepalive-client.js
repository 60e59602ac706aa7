'use strict';
/**
 * A minimal keep-alive HTTP/1.1 client for the benchmarks: one persistent connection, one request at a
 * time (each simulated client owns one). Hand-rolled so that the clients cost little CPU next to the
 * server on a 2-core machine: it writes the request in one write and parses the status line,
 * Content-Length or chunked bodies.
 */
const net = require('node:net');

class Conn {
  /**
   * @param {number} port a server on 127.0.0.1
   * @param {{ localAddress?: string }} [options] the source address (any of 127/8 works on Linux's loopback)
   */
  constructor(port, options = {}) {
    this.port = port;
    this.localAddress = options.localAddress;
    this.socket = null;
    this.pending = null;
    this.buf = Buffer.alloc(0);
  }

  connect() {
    return new Promise((res, rej) => {
      const s = net.connect({ host: '127.0.0.1', port: this.port, localAddress: this.localAddress });
      s.setNoDelay(true);
      s.once('connect', () => {
        s.off('error', rej);
        s.on('error', (e) => this.fail(e));
        res();
      });
      s.once('error', rej);
      s.on('data', (d) => this.onData(d));
      s.on('close', () => {
        this.socket = null;
        this.fail(new Error('connection closed'));
      });
      this.socket = s;
      this.buf = Buffer.alloc(0);
    });
  }

  fail(error) {
    const p = this.pending;
    this.pending = null;
    if (p) p.reject(error);
  }

  /** Resolves to `{ status, body }`; `headers` are raw header lines (`Name: value\r\n…`) for this request. */
  async request(method, path, body, headers = '') {
    if (!this.socket) await this.connect();
    const head =
      body === undefined
        ? `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Length: 0\r\n\r\n`
        : `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    return new Promise((res, rej) => {
      this.pending = { resolve: res, reject: rej };
      this.socket.write(head);
    });
  }

  onData(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    if (!this.pending) return;
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buf.toString('latin1', 0, end);
    const status = Number(head.slice(9, 12));
    let length = 0;
    let chunked = false;
    let close = false;
    for (const line of head.split('\r\n')) {
      const c = line.indexOf(':');
      if (c < 0) continue;
      const k = line.slice(0, c).toLowerCase();
      const v = line
        .slice(c + 1)
        .trim()
        .toLowerCase();
      if (k === 'content-length') length = Number(v);
      else if (k === 'transfer-encoding' && v.includes('chunked')) chunked = true;
      else if (k === 'connection' && v === 'close') close = true;
    }
    let body;
    let consumed;
    if (chunked) {
      const parts = [];
      let at = end + 4;
      for (;;) {
        const eol = this.buf.indexOf('\r\n', at);
        if (eol < 0) return;
        const size = parseInt(this.buf.toString('latin1', at, eol), 16);
        if (this.buf.length < eol + 2 + size + 2) return;
        if (size === 0) {
          consumed = eol + 4;
          break;
        }
        parts.push(this.buf.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      body = Buffer.concat(parts).toString('utf8');
    } else {
      if (this.buf.length < end + 4 + length) return;
      body = this.buf.toString('utf8', end + 4, end + 4 + length);
      consumed = end + 4 + length;
    }
    this.buf = this.buf.subarray(consumed);
    const p = this.pending;
    this.pending = null;
    if (close) {
      this.socket.destroy();
      this.socket = null;
    }
    p.resolve({ status, body });
  }

  close() {
    if (this.socket) this.socket.destroy();
    this.socket = null;
  }
}

module.exports = { Conn };
