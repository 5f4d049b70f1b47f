import { Alert, Badge, Button, Code, Group, MultiSelect, Stack, Table, Text, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { IconPlayerPause, IconPlayerPlay, IconTrash } from '@tabler/icons-react';
import { Fragment, useEffect, useRef, useState } from 'react';
import { Link } from 'react-router';
import { withQuery } from '../api/client';
import type { StreamEvent } from '../api/types';
import { Empty, JsonBlock, PageTitle } from '../components/states';
import { TableHead } from '../components/table';
import { fmtNumber } from '../lib/format';

const MAX_ROWS = 200;
const TYPES = ['track', 'page', 'identify', 'order'];

type Status = 'connecting' | 'live' | 'reconnecting' | 'closed';

/** Events as they are processed, like a debugger: server-sent events, newest on top, bounded. */
export default function LiveEvents() {
  const [types, setTypes] = useState<string[]>([]);
  const [nameText, setNameText] = useState('');
  const [name] = useDebouncedValue(nameText.trim(), 400);
  const [paused, setPaused] = useState(false);
  const [rows, setRows] = useState<StreamEvent[]>([]);
  const [held, setHeld] = useState<StreamEvent[]>([]);
  const [dropped, setDropped] = useState(0);
  const [status, setStatus] = useState<Status>('connecting');
  const [open, setOpen] = useState<string | null>(null);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;

  useEffect(() => {
    const url = withQuery('/tenant/events/stream', { type: types.join(','), name });
    const source = new EventSource(url);
    // A new filter starts a new list: rows of the old one would read as matches of the new.
    setRows([]);
    setHeld([]);
    setDropped(0);
    setStatus('connecting');
    source.onopen = () => setStatus('live');
    source.onerror = () => setStatus(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
    source.addEventListener('event', (m) => {
      let e: StreamEvent;
      try {
        e = JSON.parse((m as MessageEvent<string>).data) as StreamEvent;
      } catch {
        return;
      }
      if (pausedRef.current) setHeld((h) => [e, ...h].slice(0, MAX_ROWS));
      else setRows((r) => [e, ...r].slice(0, MAX_ROWS));
    });
    source.addEventListener('dropped', (m) => {
      try {
        const { count } = JSON.parse((m as MessageEvent<string>).data) as { count: number };
        setDropped((d) => d + count);
      } catch {
        // a malformed notice changes nothing
      }
    });
    return () => source.close();
  }, [types, name]);

  const resume = () => {
    setRows((r) => [...held, ...r].slice(0, MAX_ROWS));
    setHeld([]);
    setPaused(false);
  };

  const statusBadge = {
    connecting: <Badge color="gray">connecting…</Badge>,
    live: (
      <Badge color="teal" variant="light">
        live
      </Badge>
    ),
    reconnecting: (
      <Badge color="yellow" variant="light">
        reconnecting…
      </Badge>
    ),
    closed: (
      <Badge color="red" variant="light">
        disconnected
      </Badge>
    ),
  }[status];

  return (
    <Stack>
      <PageTitle actions={<span data-testid="stream-status">{statusBadge}</span>}>Live events</PageTitle>
      <Group align="flex-end" gap="xs" wrap="wrap">
        <MultiSelect
          label="Types"
          placeholder={types.length ? undefined : 'all types'}
          data={TYPES}
          value={types}
          onChange={setTypes}
          clearable
          w={280}
          data-testid="events-filter-type"
        />
        <TextInput
          label="Event name (exact)"
          placeholder="any name"
          value={nameText}
          onChange={(e) => setNameText(e.currentTarget.value)}
          w={240}
          data-testid="events-filter-name"
        />
        {paused ? (
          <Button leftSection={<IconPlayerPlay size={16} />} onClick={resume} data-testid="events-resume">
            Resume ({held.length} new)
          </Button>
        ) : (
          <Button
            variant="default"
            leftSection={<IconPlayerPause size={16} />}
            onClick={() => setPaused(true)}
            data-testid="events-pause"
          >
            Pause
          </Button>
        )}
        <Button
          variant="subtle"
          color="gray"
          leftSection={<IconTrash size={16} />}
          onClick={() => {
            setRows([]);
            setHeld([]);
            setDropped(0);
          }}
        >
          Clear
        </Button>
      </Group>
      {status === 'closed' && (
        <Alert color="red" title="The live stream is not available">
          The connection was refused or ended. Reload the page to try again.
        </Alert>
      )}
      {dropped > 0 && (
        <Alert color="yellow" data-testid="events-dropped">
          {fmtNumber(dropped)} events were not shown: they arrived faster than this connection could take
          them.
        </Alert>
      )}
      {rows.length === 0 ? (
        <Empty title={paused ? 'Paused' : 'Waiting for events…'}>
          Events appear here as they are processed. Send one with POST /api/ingest, or load the demo data.
        </Empty>
      ) : (
        <Table.ScrollContainer minWidth={760}>
          <Table highlightOnHover data-testid="events-table">
            <TableHead columns={['Received', 'Type', 'Name', 'Who', 'Payload']} />
            <Table.Tbody>
              {rows.map((e) => (
                <Fragment key={e.id}>
                  <Table.Tr
                    onClick={() => setOpen(open === e.id ? null : e.id)}
                    style={{ cursor: 'pointer' }}
                    data-testid="event-row"
                  >
                    <Table.Td>{new Date(e.received_at).toLocaleTimeString('en')}</Table.Td>
                    <Table.Td>
                      <Badge variant="light" size="sm">
                        {e.type}
                      </Badge>
                    </Table.Td>
                    <Table.Td fw={600}>{e.event_name}</Table.Td>
                    <Table.Td>
                      <Text size="sm">{e.identity ?? e.anonymous_id ?? '—'}</Text>
                    </Table.Td>
                    <Table.Td>
                      <Button
                        size="compact-xs"
                        variant="subtle"
                        aria-expanded={open === e.id}
                        onClick={(ev) => {
                          ev.stopPropagation();
                          setOpen(open === e.id ? null : e.id);
                        }}
                      >
                        <Code>{Object.keys(e.payload).slice(0, 3).join(', ') || '{}'}</Code>
                      </Button>
                    </Table.Td>
                  </Table.Tr>
                  {open === e.id && (
                    <Table.Tr>
                      <Table.Td colSpan={5}>
                        <Text size="xs" c="gray.7" mb={4}>
                          {e.id} · occurred {e.occurred_at} · anonymous {e.anonymous_id ?? '—'} · identity{' '}
                          {e.identity ?? '—'}{' '}
                          {e.identity && (
                            <Link to={`/profiles?by=identity&q=${encodeURIComponent(e.identity)}`}>
                              find profile
                            </Link>
                          )}
                        </Text>
                        <JsonBlock value={e.payload} />
                      </Table.Td>
                    </Table.Tr>
                  )}
                </Fragment>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Text size="xs" c="gray.7">
        Showing the newest {MAX_ROWS} at most.
      </Text>
    </Stack>
  );
}
