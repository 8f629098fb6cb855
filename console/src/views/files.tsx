/**
 * The files of a run's workspace: a list, a preview (text as text; Markdown rendered safely, with
 * raw HTML escaped) and a download. Files are fetched with the caller's token, so a download goes
 * through a Blob rather than a plain link.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ApiClient } from '../api.js';
import { renderMarkdown } from '../markdown.js';
import { ErrorNote, formatBytes } from './common.js';

interface FileEntry {
  path: string;
  size: number;
}

/** Files larger than this are offered for download only. */
const previewBytes = 1024 * 1024;

type Preview = { path: string; text: string } | { path: string; binary: true } | { path: string; tooLarge: true };

export function FilesPanel({ api, runId, revision }: { api: ApiClient; runId: string; revision: number }) {
  const [files, setFiles] = useState<FileEntry[] | undefined>();
  const [truncated, setTruncated] = useState(false);
  const [preview, setPreview] = useState<Preview | undefined>();
  const [error, setError] = useState<unknown>();

  // Listed again whenever a tool result arrives (`revision`), since a tool may have written a file.
  useEffect(() => {
    let current = true;
    api
      .files(runId)
      .then((page) => {
        if (!current) return;
        setFiles(page.items);
        setTruncated(page.truncated === true);
      })
      .catch((e: unknown) => current && setError(e));
    return () => {
      current = false;
    };
  }, [api, runId, revision]);

  const bytesOf = async (path: string) => new Uint8Array(await (await api.file(runId, path)).arrayBuffer());

  const show = async (file: FileEntry) => {
    setError(undefined);
    if (file.size > previewBytes) {
      setPreview({ path: file.path, tooLarge: true });
      return;
    }
    try {
      const bytes = await bytesOf(file.path);
      try {
        setPreview({ path: file.path, text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) });
      } catch {
        setPreview({ path: file.path, binary: true });
      }
    } catch (e) {
      setError(e);
    }
  };

  const download = async (path: string) => {
    setError(undefined);
    try {
      const url = URL.createObjectURL(new Blob([await bytesOf(path)], { type: 'application/octet-stream' }));
      const a = document.createElement('a');
      a.href = url;
      a.download = path.split('/').at(-1) ?? 'file';
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      setError(e);
    }
  };

  return (
    <section class="panel files" aria-labelledby="files-heading">
      <h2 id="files-heading">Files</h2>
      <ErrorNote error={error} />
      {files === undefined && !error && <p>Loading…</p>}
      {files?.length === 0 && <p>No files yet.</p>}
      {files && files.length > 0 && (
        <ul class="file-list">
          {files.map((file) => (
            <li key={file.path}>
              <button type="button" class="link" aria-pressed={preview?.path === file.path ? 'true' : 'false'} onClick={() => show(file)}>
                {file.path}
              </button>{' '}
              <span class="size">{formatBytes(file.size)}</span>
            </li>
          ))}
        </ul>
      )}
      {truncated && <p class="note">The list is cut at 10,000 files.</p>}
      {preview && <PreviewView preview={preview} onDownload={() => download(preview.path)} />}
    </section>
  );
}

function PreviewView({ preview, onDownload }: { preview: Preview; onDownload: () => void }) {
  const markdown = 'text' in preview && /\.(md|markdown)$/i.test(preview.path);
  const html = useMemo(() => (markdown && 'text' in preview ? renderMarkdown(preview.text) : undefined), [preview, markdown]);
  return (
    <div class="preview" aria-labelledby="preview-heading">
      <div class="panel-head">
        <h3 id="preview-heading">{preview.path}</h3>
        <button type="button" onClick={onDownload}>
          Download
        </button>
      </div>
      {'text' in preview && !html && <pre class="file-text">{preview.text}</pre>}
      {html && <div class="markdown file-markdown" dangerouslySetInnerHTML={html} />}
      {'binary' in preview && <p>This file is not text; download it to open it.</p>}
      {'tooLarge' in preview && <p>This file is too large to preview here; download it.</p>}
    </div>
  );
}
