// The test pyramid's order: starts the layers (jest projects, named in jest.config.js) bottom up.
const Sequencer = require('@jest/test-sequencer').default;
const { rank } = require('./layers');

class LayerSequencer extends Sequencer {
  sort(tests) {
    const layer = (test) => rank(test.context.config.displayName);
    // Within a layer, jest's own order (failed first, then slowest first).
    const within = super.sort(tests);
    return [...within].sort((a, b) => layer(a) - layer(b));
  }
}

module.exports = LayerSequencer;
