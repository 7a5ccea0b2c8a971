// Fixed free ports live in packages/testing (the chaos run uses them outside Jest too).
export { fixedFreePort } from '@switchboard/testing';
