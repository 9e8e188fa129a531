#!/usr/bin/env node
// Validates Kubernetes manifests against the API's JSON schemas, offline: the core API (Deployment,
// Service, ConfigMap, Secret, PodDisruptionBudget, Namespace) from the npm package kubernetes-models,
// the CRDs from @kubernetes-models/keda (ScaledObject) and @kubernetes-models/prometheus-operator
// (ServiceMonitor), whose validators are ajv compilations of the Kubernetes OpenAPI schemas and of
// the CRDs' openAPIV3Schema.
//
// Usage: node infra/k8s/validate.mjs [--json] [file.yaml ...]   (default: every file kustomization.yaml lists)
// Exit status 0 when every document is valid; 1 otherwise (each error names file, document, path).
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));

/** The model module of each apiVersion: the group's folder inside its npm package. */
const MODULES = {
  v1: 'kubernetes-models/v1',
  'apps/v1': 'kubernetes-models/apps/v1',
  'policy/v1': 'kubernetes-models/policy/v1',
  'autoscaling/v2': 'kubernetes-models/autoscaling/v2',
  'keda.sh/v1alpha1': '@kubernetes-models/keda/keda.sh/v1alpha1',
  'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
};

function listedFiles() {
  const [kustomization] = parseAllDocuments(readFileSync(join(here, 'kustomization.yaml'), 'utf8'));
  return kustomization.toJS().resources.map((r) => join(here, r));
}

/** Validates every document of `files`; returns one entry per document. */
export async function validateFiles(files) {
  const results = [];
  for (const file of files) {
    const docs = parseAllDocuments(readFileSync(file, 'utf8'));
    for (const [index, doc] of docs.entries()) {
      const where = { file: relative(process.cwd(), file), index };
      if (doc.errors.length > 0) {
        results.push({ ...where, errors: doc.errors.map((e) => `YAML: ${e.message}`) });
        continue;
      }
      const obj = doc.toJS();
      const { apiVersion, kind } = obj ?? {};
      const name = obj?.metadata?.name;
      const module = MODULES[apiVersion];
      if (!module || typeof kind !== 'string') {
        results.push({
          ...where,
          kind,
          name,
          errors: [`no schema for apiVersion ${apiVersion} kind ${kind}`],
        });
        continue;
      }
      let Model;
      try {
        Model = (await import(`${module}/${kind}`))[kind];
      } catch {
        Model = undefined;
      }
      if (!Model) {
        results.push({ ...where, kind, name, errors: [`no schema for ${apiVersion} ${kind}`] });
        continue;
      }
      try {
        new Model(obj).validate();
        results.push({ ...where, kind, name, errors: [] });
      } catch (e) {
        const errors = (e.errors ?? [{ instancePath: '', message: e.message }]).map(
          (x) =>
            `${x.instancePath || '/'} ${x.message}${x.params?.allowedValues ? ` (${x.params.allowedValues.join(', ')})` : ''}`,
        );
        results.push({ ...where, kind, name, errors });
      }
    }
  }
  return results;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const files = args.filter((a) => a !== '--json');
  const results = await validateFiles(files.length > 0 ? files : listedFiles());
  const bad = results.filter((r) => r.errors.length > 0);
  if (json) {
    console.log(JSON.stringify(results));
  } else {
    for (const r of results)
      console.log(
        `${r.errors.length ? 'INVALID' : 'ok     '} ${r.file}#${r.index} ${r.kind ?? '?'} ${r.name ?? ''}`,
      );
    for (const r of bad) for (const e of r.errors) console.log(`  ${r.file}#${r.index} ${r.kind}: ${e}`);
    console.log(`${results.length - bad.length} valid, ${bad.length} invalid`);
  }
  process.exit(bad.length > 0 ? 1 : 0);
}
