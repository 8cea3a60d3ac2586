// Test page script for gateway/browser_test.go, bundled with esbuild at
// test time. Query: service (the gateway's account URL), sas (a container
// SAS without "?"), container, blob; optionally before (a blob to try
// first) and ready (a same-origin URL the page POSTs to after that first
// try; the test sets the CORS rules before answering it).
//
// Each try uploads the blob, lists the container and downloads the blob
// with @azure/storage-blob. The page writes "RESULT OK {...}" or
// "RESULT FAIL ..." into #result and the title.
import { BlobServiceClient } from "@azure/storage-blob";

const text = "uploaded by Chromium through blobgw";

async function attempt(q, name) {
  const service = new BlobServiceClient(q.get("service") + "?" + q.get("sas"), undefined, {
    retryOptions: { maxTries: 1 },
  });
  const container = service.getContainerClient(q.get("container"));
  const blob = container.getBlockBlobClient(name);
  const up = await blob.upload(text, text.length, {
    blobHTTPHeaders: { blobContentType: "text/plain" },
    metadata: { from: "browser" },
  });
  const names = [];
  for await (const item of container.listBlobsFlat()) {
    names.push(item.name);
  }
  const dl = await blob.download();
  const body = await (await dl.blobBody).text();
  return {
    names,
    body,
    // Not CORS-safelisted: readable only through Access-Control-Expose-Headers.
    uploadETag: up.etag || "",
    requestId: dl.requestId || "",
  };
}

function describe(e) {
  return (e && (e.name + ": " + e.message)) || String(e);
}

async function run() {
  const q = new URLSearchParams(window.location.search);
  const out = {};
  if (q.get("before")) {
    try {
      await attempt(q, q.get("before"));
      out.before = "OK";
    } catch (e) {
      out.before = "FAIL " + describe(e);
    }
    const r = await fetch(q.get("ready"), { method: "POST" });
    if (!r.ok) {
      throw new Error("ready: HTTP " + r.status);
    }
  }
  out.after = await attempt(q, q.get("blob"));
  return out;
}

function report(line) {
  document.getElementById("result").textContent = line;
  document.title = line.length > 200 ? line.slice(0, 200) : line;
}

run().then(
  (r) => report("RESULT OK " + JSON.stringify(r)),
  (e) => report("RESULT FAIL " + describe(e)),
);
