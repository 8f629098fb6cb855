/** One row of a Markdown table, as the bench and the chaos report print them. */
export const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
