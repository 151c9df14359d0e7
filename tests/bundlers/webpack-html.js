// Writes index.html next to webpack's output (what html-webpack-plugin would do).
export default class HtmlLike {
  apply(compiler) {
    compiler.hooks.thisCompilation.tap("HtmlLike", (compilation) => {
      compilation.hooks.processAssets.tap({ name: "HtmlLike", stage: 0 }, () => {
        const html = '<!doctype html><meta charset="utf-8"><script src="./main.js"></script>\n';
        compilation.emitAsset("index.html", new compiler.webpack.sources.RawSource(html));
      });
    });
  }
}
