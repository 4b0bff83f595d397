// A Worker of three modules (isolane dev examples/bundle/main.js): wrangler's
// module types, as workerd runs them. add.wasm exports add(a, b) (its text
// form is add.wat); greeting.txt is a Text module.
import addModule from './add.wasm';
import greeting from './greeting.txt';

const { exports } = await WebAssembly.instantiate(addModule);

export default {
  fetch() {
    return new Response(`${exports.add(40, 2)} ${greeting}`);
  },
};
