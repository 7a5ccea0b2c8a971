import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1';
import type { K8sObject } from './kustomize';

/**
 * The Kubernetes schema models (package kubernetes-models, generated from the Kubernetes OpenAPI
 * spec) for every kind the manifests use. A kind missing here fails validation: add its model.
 */
const MODELS = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/Ingress': Ingress,
} as const;

type Models = typeof MODELS;

/** Validates one object against its schema; throws naming the object and every violation. */
export function validateK8sObject(object: K8sObject): void {
  const Model = (MODELS as Record<string, new (data: never) => { validate(): void }>)[
    `${object.apiVersion}/${object.kind}`
  ];
  if (!Model)
    throw new Error(
      `${object.apiVersion} ${object.kind} has no schema model in test/e2e/support/k8s-schemas.ts`,
    );
  try {
    new Model(object as never).validate();
  } catch (error) {
    throw new Error(`${object.kind} ${object.metadata.name}: ${(error as Error).message}`);
  }
}

/** The typed model of an object of a known kind (for assertions on its fields). */
export function asModel<K extends keyof Models>(key: K, object: K8sObject): InstanceType<Models[K]> {
  if (`${object.apiVersion}/${object.kind}` !== key) throw new Error(`${object.metadata.name} is not ${key}`);
  const Model = MODELS[key] as unknown as new (data: unknown) => InstanceType<Models[K]>;
  return new Model(object);
}
