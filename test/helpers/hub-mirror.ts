// A local mirror of the Hugging Face download path, as the download tests fake the Hub:
// a repository's file list, and a 302 from resolve/ to a "CDN" naming the sha256. Every
// file of the repository has the same bytes. LLAMA_TS_HF_ENDPOINT points the downloader
// at it.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HubMirror {
  url: string;
  sha: string;
  close(): Promise<void>;
}

export async function startHubMirror(repo: string, files: readonly string[], blob: Buffer): Promise<HubMirror> {
  const sha = createHash('sha256').update(blob).digest('hex');
  const hub: Server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    if (path === `/api/models/${repo}`) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ siblings: ['README.md', ...files].map((rfilename) => ({ rfilename })) }));
    } else if (files.some((f) => path === `/${repo}/resolve/main/${f}`)) {
      res.writeHead(302, { Location: '/cdn/blob', 'X-Linked-Etag': `"${sha}"`, 'X-Linked-Size': String(blob.length) });
      res.end();
    } else if (path === '/cdn/blob') {
      res.writeHead(200, { 'Content-Length': String(blob.length), ETag: `"${sha}"` });
      res.end(blob);
    } else res.writeHead(404).end('Entry not found');
  });
  await new Promise<void>((r) => hub.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(hub.address() as AddressInfo).port}`,
    sha,
    close: () => {
      hub.closeAllConnections();
      return new Promise<void>((r) => hub.close(() => r()));
    },
  };
}
