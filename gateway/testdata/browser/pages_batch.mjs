// Node script for gateway/jssdk_test.go (TestJSSDKPagesBatch): the
// JavaScript SDK (@azure/storage-blob, the package the browser test
// bundles) with Shared Key against the gateway. Arguments: the account URL,
// the account name, its key. It prints one line, "RESULT OK {...}" or
// "RESULT FAIL ...", for the Go test to check against the Go SDK's view.
//
// Page blobs: create, upload pages, clear pages, list page ranges,
// download. Blob Batch: BlobBatchClient deleteBlobs and setBlobsAccessTier
// at service scope and at container scope, one of each batch naming a
// missing blob.
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";

const [serviceURL, account, key] = process.argv.slice(2);

async function bodyOf(dl) {
  const chunks = [];
  for await (const c of dl.readableStreamBody) {
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

async function pages(svc) {
  const cc = svc.getContainerClient("jspages");
  await cc.create();
  const pb = cc.getPageBlobClient("disk.vhd");
  await pb.create(8192, { blobSequenceNumber: 3, blobHTTPHeaders: { blobContentType: "application/x-vhd" } });
  await pb.uploadPages(Buffer.alloc(2048, "a"), 1024, 2048);
  await pb.uploadPages(Buffer.alloc(512, "b"), 6144, 512);
  await pb.clearPages(1536, 512);
  const ranges = [];
  for await (const r of pb.listPageRanges()) {
    ranges.push([r.start, r.end]);
  }
  const props = await pb.getProperties();
  const body = await bodyOf(await pb.download());
  const model = Buffer.alloc(8192);
  model.fill("a", 1024, 1536);
  model.fill("a", 2048, 3072);
  model.fill("b", 6144, 6656);
  return {
    ranges,
    blobType: props.blobType,
    length: props.contentLength,
    sequenceNumber: props.blobSequenceNumber,
    bodyMatches: body.equals(model),
  };
}

function summary(r) {
  return {
    succeeded: r.subResponsesSucceededCount,
    failed: r.subResponsesFailedCount,
    statuses: r.subResponses.map((s) => s.status),
    codes: r.subResponses.map((s) => s.errorCode || ""),
  };
}

async function batch(svc) {
  const cc = svc.getContainerClient("jsbatch");
  await cc.create();
  for (const name of ["s1", "s2", "t1", "t2", "c1", "u1"]) {
    await cc.getBlockBlobClient(name).upload(name, name.length);
  }
  const blobs = (...names) => names.map((n) => cc.getBlobClient(n));
  const service = svc.getBlobBatchClient();
  const scoped = cc.getBlobBatchClient();
  return {
    serviceDelete: summary(await service.deleteBlobs(blobs("s1", "s2", "missing"))),
    serviceTier: summary(await service.setBlobsAccessTier(blobs("t1", "t2"), "Cool")),
    containerDelete: summary(await scoped.deleteBlobs(blobs("c1"))),
    containerTier: summary(await scoped.setBlobsAccessTier(blobs("u1", "missing"), "Archive")),
  };
}

async function run() {
  const svc = new BlobServiceClient(serviceURL, new StorageSharedKeyCredential(account, key), {
    retryOptions: { maxTries: 1 },
  });
  return { pages: await pages(svc), batch: await batch(svc) };
}

run().then(
  (r) => console.log("RESULT OK " + JSON.stringify(r)),
  (e) => {
    console.log("RESULT FAIL " + ((e && e.name + ": " + e.message + (e.code ? " (" + e.code + ")" : "")) || String(e)));
  },
);
