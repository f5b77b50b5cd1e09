// A small terminal screen: replays what a program wrote (text, line feeds, carriage returns, the
// cursor moves and erasures readline uses, styles ignored) and returns the lines a person would
// see. Enough to check that the chat's output and the typed line never overwrite each other.

/** The visible lines after `written` was shown on a terminal `columns` wide (trailing blanks cut). */
export function screenLines(written: string, columns = 80): string[] {
  const rows: string[][] = [[]];
  let row = 0;
  let column = 0;
  const line = () => {
    while (rows.length <= row) rows.push([]);
    return rows[row]!;
  };
  const put = (char: string) => {
    if (column >= columns) {
      row += 1;
      column = 0;
    }
    const cells = line();
    while (cells.length < column) cells.push(' ');
    cells[column] = char;
    column += 1;
  };
  let index = 0;
  while (index < written.length) {
    const char = written[index]!;
    if (char === '\x1b') {
      const csi = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(written.slice(index, index + 32));
      if (!csi) throw new Error(`an escape sequence the screen does not know at ${index}: ${JSON.stringify(written.slice(index, index + 12))}`);
      const [whole, parameters = '', command] = csi;
      const count = Number(parameters.split(';')[0] || (command === 'J' || command === 'K' ? 0 : 1));
      switch (command) {
        case 'A': row = Math.max(0, row - count); break;
        case 'B': row += count; break;
        case 'C': column = Math.min(columns - 1, column + count); break;
        case 'D': column = Math.max(0, column - count); break;
        case 'G': column = Math.max(0, count - 1); break;
        case 'J':
          if (count === 0) {
            line().splice(column);
            rows.splice(row + 1);
          }
          break;
        case 'K':
          if (count === 0) line().splice(column);
          else if (count === 2) line().splice(0);
          else line().fill(' ', 0, column + 1);
          break;
        case 'm': break;
        default: throw new Error(`an escape sequence the screen does not know: ${JSON.stringify(whole)}`);
      }
      index += whole.length;
      continue;
    }
    if (char === '\n') {
      // A terminal's output processing turns a line feed into carriage return and line feed.
      row += 1;
      column = 0;
      line();
    } else if (char === '\r') {
      column = 0;
    } else {
      put(char);
    }
    index += 1;
  }
  return rows.map((cells) => cells.join('').trimEnd());
}
