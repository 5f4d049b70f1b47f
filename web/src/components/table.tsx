import { Table, VisuallyHidden } from '@mantine/core';

/**
 * A table's column: its label; `right` aligns it right (figures); `hidden` names it for screen
 * readers only (a column of buttons).
 */
export type Column = string | { label: string; right?: boolean; hidden?: boolean };

/** A table's head row, from its columns. */
export function TableHead({ columns }: { columns: readonly Column[] }) {
  return (
    <Table.Thead>
      <Table.Tr>
        {columns.map((c) => {
          const col: Exclude<Column, string> = typeof c === 'string' ? { label: c } : c;
          return (
            <Table.Th key={col.label} ta={col.right ? 'right' : undefined}>
              {col.hidden ? <VisuallyHidden>{col.label}</VisuallyHidden> : col.label}
            </Table.Th>
          );
        })}
      </Table.Tr>
    </Table.Thead>
  );
}
