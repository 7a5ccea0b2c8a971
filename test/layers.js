// The layers of the test pyramid, bottom up: the jest projects of jest.config.js.
const LAYERS = ['unit', 'contract', 'integration', 'e2e'];

/** A layer's place in the pyramid (a project's displayName, string or object); unknown ones last. */
const rank = (name) => {
  const at = LAYERS.indexOf(typeof name === 'string' ? name : (name?.name ?? ''));
  return at < 0 ? LAYERS.length : at;
};

module.exports = { LAYERS, rank };
