/**
 * Where a proxy's latency goes, measured from outside its code: a preload
 * (`node --import ./bench/timing-hooks.mjs …`) that timestamps, for each HTTP
 * request the process serves while no other request is in flight,
 *
 *   t0  the request arrives (the HTTP server emits 'request'),
 *   t1  the first write to a child process's stdin after t0 (the call leaves for the upstream),
 *   t2  the first data from that child's stdout after t1 (the upstream's answer is back),
 *   tw  the first write of the response body after t2 (the answer goes out),
 *   te  the response's end() is called,
 *   t3  the response is finished ('finish' on the response).
 *
 * With one call in flight the three spans are the proxy's work on the way in
 * (t1 − t0), the upstream hop (t2 − t1) and the proxy's work on the way back
 * (t3 − t2), split into until the answer is written (tw − t2), until the
 * response is ended (te − tw) and until it is finished (t3 − te). On exit it writes the medians to `$IDEM_BENCH_TIMING_DIR/<pid>.json`.
 * Nothing is changed in the process's own code.
 */
import childProcess from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';

const dir = process.env.IDEM_BENCH_TIMING_DIR;
if (dir) {
  const now = () => Number(process.hrtime.bigint()) / 1000; // µs
  let inFlight = 0;
  /** The one request in flight alone, if any. */
  let current;
  const spans = {
    inbound: [],
    upstream: [],
    outbound: [],
    toWrite: [],
    writeToEnd: [],
    endToFinish: [],
    total: [],
  };
  let requests = 0;

  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (event, ...args) {
    const [req, res] = args;
    if (event === 'request' && req.method === 'POST') {
      requests++;
      inFlight++;
      const timing = { t0: now(), alone: inFlight === 1 };
      if (inFlight > 1 && current) current.alone = false;
      current = inFlight === 1 ? timing : undefined;
      const write = res.write;
      res.write = function (...writeArgs) {
        if (timing.t2 !== undefined && timing.tw === undefined) timing.tw = now();
        return write.apply(this, writeArgs);
      };
      const end = res.end;
      res.end = function (...endArgs) {
        timing.te ??= now();
        return end.apply(this, endArgs);
      };
      res.once('finish', () => {
        inFlight--;
        if (current === timing) current = undefined;
        if (!timing.alone || timing.t1 === undefined || timing.t2 === undefined) return;
        const t3 = now();
        spans.inbound.push(timing.t1 - timing.t0);
        spans.upstream.push(timing.t2 - timing.t1);
        spans.outbound.push(t3 - timing.t2);
        spans.total.push(t3 - timing.t0);
        if (timing.tw !== undefined && timing.te !== undefined && timing.te >= timing.tw) {
          spans.toWrite.push(timing.tw - timing.t2);
          spans.writeToEnd.push(timing.te - timing.tw);
          spans.endToFinish.push(t3 - timing.te);
        }
      });
    }
    return emit.call(this, event, ...args);
  };

  const spawn = childProcess.spawn;
  childProcess.spawn = function (...args) {
    const child = spawn.apply(this, args);
    const write = child.stdin?.write;
    if (write) {
      child.stdin.write = function (...writeArgs) {
        if (current && current.t1 === undefined) current.t1 = now();
        return write.apply(this, writeArgs);
      };
    }
    child.stdout?.on('data', () => {
      if (current && current.t1 !== undefined && current.t2 === undefined) current.t2 = now();
    });
    return child;
  };
  syncBuiltinESMExports();

  process.once('exit', () => {
    const median = (values) => {
      if (values.length === 0) return null;
      const sorted = [...values].sort((a, b) => a - b);
      return Math.round(sorted[sorted.length >> 1]);
    };
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, `${process.pid}.json`),
      JSON.stringify({
        argv: process.argv.slice(1).join(' '),
        requests,
        measured: spans.total.length,
        medianUs: Object.fromEntries(Object.entries(spans).map(([k, v]) => [k, median(v)])),
      }),
    );
  });
}
