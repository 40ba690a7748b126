// The globals every JavaScript runtime Backstep supports has (browsers, Node, Deno, Bun: the
// WHATWG Encoding API), declared for code that compiles without DOM or Node types: shared game
// code and the engine's pure modules it imports. Nothing else of the DOM or Node is visible there.

interface TextEncoder {
  encode(input?: string): Uint8Array;
}
declare var TextEncoder: { new (): TextEncoder };

interface TextDecoder {
  decode(input?: ArrayBufferView | ArrayBuffer): string;
}
declare var TextDecoder: {
  new (label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean }): TextDecoder;
};
