// React 18's UMD build (window.React) as the ES module `react` that dist/react.js imports.
const React = window.React;
export default React;
export const { useCallback, useEffect, useMemo, useRef, useState } = React;
