import { Button, Grid, Group, JsonInput, Stack, Tabs, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { api } from '../api/client';
import { useSession } from '../api/session';
import type { Segment } from '../api/types';
import { ConfirmModal } from '../components/confirm';
import { ErrorAlert } from '../components/states';
import { Builder } from './Builder';
import { countConditions, type Node } from './form';
import { useSegmentOptions } from './options';
import { LiveCount } from './Preview';
import { fromQuery, toQuery } from './query';

const STARTER: unknown = { and: [{ field: 'total_spend', op: 'gte', value: 100 }] };

export function Editor({ segment }: { segment: Segment | null }) {
  const session = useSession();
  const readOnly = !session.can.write;
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [name, setName] = useState(segment?.name ?? '');
  const [description, setDescription] = useState(segment?.description ?? '');
  const [tree, setTree] = useState<Node>(() => {
    const n = fromQuery(segment?.query ?? STARTER);
    // The builder's root is always a group, so conditions can be added next to a lone one.
    return n.kind === 'group' ? n : { kind: 'group', id: 'root', combinator: 'and', children: [n] };
  });
  const [rootWrapped] = useState(() => {
    const q = segment?.query ?? STARTER;
    return !(typeof q === 'object' && q !== null && ('and' in q || 'or' in q));
  });
  // A lone condition saved without a group is saved back the same way.
  const query = useMemo(() => {
    if (
      rootWrapped &&
      tree.kind === 'group' &&
      tree.children.length === 1 &&
      tree.combinator === 'and' &&
      tree.children[0]
    )
      return toQuery(tree.children[0]);
    return toQuery(tree);
  }, [tree, rootWrapped]);
  const [jsonText, setJsonText] = useState('');
  const [jsonError, setJsonError] = useState<string | null>(null);
  const [tab, setTab] = useState<string | null>('builder');
  const conditions = countConditions(tree);
  const empty = tree.kind === 'group' && tree.children.length === 0;
  const segmentOptions = useSegmentOptions(segment?.id);

  const save = useMutation({
    mutationFn: async () => {
      const body = { name: name.trim(), description: description.trim() || null, query };
      if (segment) return (await api.patch<{ data: Segment }>(`/tenant/segments/${segment.id}`, body)).data;
      return (await api.post<{ data: Segment }>('/tenant/segments', body)).data;
    },
    onSuccess: (s) => {
      void qc.invalidateQueries({ queryKey: ['/tenant/segments'] });
      void qc.invalidateQueries({ queryKey: ['segment-options'] });
      qc.setQueryData(['segment', s.id], s);
      if (!segment) void navigate(`/segments/${s.id}`);
    },
  });
  const [confirmDelete, setConfirmDelete] = useState(false);
  const del = useMutation({
    mutationFn: () => api.delete(`/tenant/segments/${segment?.id}`),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['/tenant/segments'] });
      void qc.invalidateQueries({ queryKey: ['segment-options'] });
      void navigate('/segments');
    },
  });

  useEffect(() => {
    if (tab === 'json') {
      setJsonText(JSON.stringify(query, null, 2));
      setJsonError(null);
    }
  }, [tab, query]);

  const applyJson = () => {
    try {
      const parsed = JSON.parse(jsonText);
      const n = fromQuery(parsed);
      setTree(n.kind === 'group' ? n : { kind: 'group', id: 'root', combinator: 'and', children: [n] });
      setJsonError(null);
      setTab('builder');
    } catch (e) {
      setJsonError((e as Error).message);
    }
  };

  return (
    <Grid gap="md">
      <Grid.Col span={{ base: 12, lg: 8 }}>
        <Stack>
          <Group grow align="flex-start" wrap="wrap">
            <TextInput
              label="Name"
              required
              value={name}
              maxLength={200}
              readOnly={readOnly}
              onChange={(e) => setName(e.currentTarget.value)}
              data-testid="segment-name"
            />
            <Textarea
              label="Description"
              autosize
              minRows={1}
              maxLength={2000}
              value={description}
              readOnly={readOnly}
              onChange={(e) => setDescription(e.currentTarget.value)}
            />
          </Group>
          <Tabs value={tab} onChange={setTab}>
            <Tabs.List>
              <Tabs.Tab value="builder" data-testid="tab-builder">
                Builder
              </Tabs.Tab>
              <Tabs.Tab value="json" data-testid="tab-json">
                JSON
              </Tabs.Tab>
            </Tabs.List>
            <Tabs.Panel value="builder" pt="sm">
              <Builder node={tree} onChange={setTree} segmentOptions={segmentOptions} readOnly={readOnly} />
              <Text size="xs" c="gray.7" mt={4}>
                {conditions} of 100 conditions
              </Text>
            </Tabs.Panel>
            <Tabs.Panel value="json" pt="sm">
              <Stack>
                <JsonInput
                  label="The query as the API takes it"
                  autosize
                  minRows={8}
                  maxRows={30}
                  formatOnBlur
                  value={jsonText}
                  readOnly={readOnly}
                  onChange={setJsonText}
                  error={jsonError}
                  data-testid="segment-json"
                />
                {!readOnly && (
                  <Button w="fit-content" onClick={applyJson} data-testid="segment-json-apply">
                    Apply JSON to the builder
                  </Button>
                )}
              </Stack>
            </Tabs.Panel>
          </Tabs>
          {save.error && <ErrorAlert error={save.error} title="Not saved" />}
          {!readOnly && (
            <Group>
              <Button
                onClick={() => save.mutate()}
                loading={save.isPending}
                disabled={!name.trim() || empty}
                data-testid="segment-save"
              >
                {segment ? 'Save changes' : 'Save segment'}
              </Button>
              {save.isSuccess && segment && (
                <Text size="sm" c="teal.8" role="status">
                  Saved; membership is being recomputed.
                </Text>
              )}
              {segment && (
                <Button
                  color="red"
                  variant="subtle"
                  onClick={() => setConfirmDelete(true)}
                  data-testid="segment-delete"
                >
                  Delete
                </Button>
              )}
            </Group>
          )}
        </Stack>
      </Grid.Col>
      <Grid.Col span={{ base: 12, lg: 4 }}>
        <LiveCount segment={segment} query={query} empty={empty} />
      </Grid.Col>
      <ConfirmModal
        opened={confirmDelete}
        onClose={() => setConfirmDelete(false)}
        title="Delete this segment?"
        confirmLabel="Delete segment"
        onConfirm={() => del.mutate()}
        busy={del.isPending}
        error={del.error}
        testid="segment-delete-confirm"
      >
        The segment, its membership and its history are deleted (no exits are sent). A segment that others
        refer to cannot be deleted.
      </ConfirmModal>
    </Grid>
  );
}
