import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

/** A Kubernetes object as loaded from YAML; the model classes in k8s-schemas.ts type the rest. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
}

/** Every YAML document of a file, failing on any parse error (empty documents are dropped). */
export function loadYamlObjects(file: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value))
      throw new Error(`${file}: a document is not an object`);
    const object = value as K8sObject;
    if (!object.apiVersion || !object.kind || !object.metadata?.name) {
      throw new Error(`${file}: a document lacks apiVersion, kind or metadata.name`);
    }
    objects.push(object);
  }
  return objects;
}

/** Kinds that live outside namespaces, so kustomize's `namespace:` leaves them alone. */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'IngressClass',
]);

/** The kustomization fields the offline renderer emulates; any other field fails the render. */
const SUPPORTED_FIELDS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'images']);

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
}

interface Kustomization {
  namespace?: string;
  resources?: string[];
  images?: ImageRule[];
  [key: string]: unknown;
}

export function readKustomization(dir: string): Kustomization {
  return parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
}

/**
 * `kubectl kustomize DIR` for a flat kustomization: resource files (not directories or remote
 * bases), `namespace` and `images`. Anything else throws, so a manifest change that needs more of
 * kustomize fails the test instead of being half-rendered.
 */
export function renderKustomization(dir: string): K8sObject[] {
  const kustomization = readKustomization(dir);
  for (const field of Object.keys(kustomization)) {
    if (!SUPPORTED_FIELDS.has(field)) {
      throw new Error(
        `kustomization.yaml uses "${field}", which test/e2e/support/kustomize.ts does not emulate`,
      );
    }
  }
  const objects: K8sObject[] = [];
  for (const resource of kustomization.resources ?? []) {
    const path = join(dir, resource);
    if (!statSync(path).isFile()) throw new Error(`resource ${resource} is not a file`);
    objects.push(...loadYamlObjects(path));
  }
  for (const object of objects) {
    if (kustomization.namespace && !CLUSTER_SCOPED.has(object.kind)) {
      object.metadata.namespace = kustomization.namespace;
    }
    for (const rule of kustomization.images ?? []) rewriteImages(object, rule);
  }
  return objects;
}

function rewriteImages(node: unknown, rule: ImageRule): void {
  if (Array.isArray(node)) {
    node.forEach((item) => rewriteImages(item, rule));
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const record = node as Record<string, unknown>;
  for (const field of ['containers', 'initContainers']) {
    const containers = record[field];
    if (!Array.isArray(containers)) continue;
    for (const container of containers as { image?: string }[]) {
      if (typeof container.image === 'string') container.image = rewriteImage(container.image, rule);
    }
  }
  Object.values(record).forEach((value) => rewriteImages(value, rule));
}

function rewriteImage(image: string, rule: ImageRule): string {
  const [withTag = '', digest] = image.split('@');
  const slash = withTag.lastIndexOf('/');
  const colon = withTag.lastIndexOf(':');
  const name = colon > slash ? withTag.slice(0, colon) : withTag;
  const tag = colon > slash ? withTag.slice(colon + 1) : undefined;
  if (name !== rule.name) return image;
  const newTag = rule.newTag ?? tag;
  return `${rule.newName ?? name}${newTag ? `:${newTag}` : ''}${digest ? `@${digest}` : ''}`;
}

/** `kind/namespace/name`, the identity kustomize keeps objects unique by. */
export function objectId(object: K8sObject): string {
  return `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
}
