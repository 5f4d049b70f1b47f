import { Badge, Button, Group, Modal, NumberInput, Stack, Table, TextInput } from '@mantine/core';
import { useForm } from '@mantine/form';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client';
import { useSession } from '../api/session';
import type { Product } from '../api/types';
import { ConfirmModal } from '../components/confirm';
import { Pager, usePaged } from '../components/paging';
import { Empty, ErrorAlert, PageTitle, QueryState } from '../components/states';
import { TableHead } from '../components/table';
import { fmtMoney, fmtTime } from '../lib/format';

interface ProductForm {
  product_id: string;
  name: string;
  price: number | string;
  currency: string;
  category: string;
}

function ProductEditor({ product, onDone }: { product: Product | null; onDone: () => void }) {
  const qc = useQueryClient();
  const form = useForm<ProductForm>({
    initialValues: {
      product_id: product?.product_id ?? '',
      name: product?.name ?? '',
      price: product?.price ?? '',
      currency: product?.currency ?? '',
      category: product?.category ?? '',
    },
    validate: {
      product_id: (v) => (!product && !v.trim() ? 'A product id is required' : null),
      name: (v) => (!v.trim() ? 'A name is required' : null),
      price: (v) => (v !== '' && (Number(v) < 0 || Number(v) > 1e12) ? 'Between 0 and 10^12' : null),
      currency: (v) => (v && !/^[A-Z]{3}$/.test(v) ? 'An ISO 4217 code such as EUR' : null),
    },
  });
  const save = useMutation({
    mutationFn: (v: ProductForm) => {
      const body = {
        name: v.name.trim(),
        price: v.price === '' ? null : Number(v.price),
        currency: v.currency || null,
        category: v.category || null,
      };
      return product
        ? api.patch(`/tenant/products/${encodeURIComponent(product.product_id)}`, body)
        : api.post('/tenant/products', { product_id: v.product_id.trim(), ...body });
    },
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['/tenant/products'] });
      onDone();
    },
  });
  return (
    <form onSubmit={form.onSubmit((v) => save.mutate(v))}>
      <Stack>
        {!product && <TextInput label="Product id" required {...form.getInputProps('product_id')} />}
        <TextInput label="Name" required {...form.getInputProps('name')} />
        <Group grow>
          <NumberInput label="Price" min={0} decimalScale={2} {...form.getInputProps('price')} />
          <TextInput label="Currency" placeholder="EUR" {...form.getInputProps('currency')} />
        </Group>
        <TextInput label="Category" {...form.getInputProps('category')} />
        {save.error && <ErrorAlert error={save.error} />}
        <Group justify="flex-end">
          <Button variant="default" onClick={onDone}>
            Cancel
          </Button>
          <Button type="submit" loading={save.isPending}>
            Save
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

export default function Products() {
  const session = useSession();
  const qc = useQueryClient();
  const [categoryText, setCategoryText] = useState('');
  const [category] = useDebouncedValue(categoryText.trim(), 400);
  const paged = usePaged<Product>('/tenant/products', { category });
  const [editing, setEditing] = useState<Product | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Product | null>(null);
  const del = useMutation({
    mutationFn: (id: string) => api.delete(`/tenant/products/${encodeURIComponent(id)}`),
    onSuccess: () => {
      setDeleting(null);
      void qc.invalidateQueries({ queryKey: ['/tenant/products'] });
    },
  });
  return (
    <Stack>
      <PageTitle
        actions={
          session.can.write && (
            <Button onClick={() => setEditing('new')} data-testid="product-new">
              New product
            </Button>
          )
        }
      >
        Products
      </PageTitle>
      <TextInput
        label="Category (exact)"
        placeholder="any category"
        value={categoryText}
        onChange={(e) => setCategoryText(e.currentTarget.value)}
        w={240}
      />
      <QueryState
        query={paged.query}
        isEmpty={(d) => d.data.length === 0}
        empty={
          <Empty title="No products">
            Products come from order line items or from POST /tenant/products.
          </Empty>
        }
      >
        {() => (
          <Table.ScrollContainer minWidth={700}>
            <Table striped data-testid="products-table">
              <TableHead
                columns={[
                  'Product',
                  'Category',
                  { label: 'Price', right: true },
                  'Source',
                  'Updated',
                  { label: 'Actions', hidden: true },
                ]}
              />
              <Table.Tbody>
                {paged.rows.map((p) => (
                  <Table.Tr key={p.product_id}>
                    <Table.Td>
                      <b>{p.name ?? p.product_id}</b> <span>({p.product_id})</span>
                    </Table.Td>
                    <Table.Td>{p.category ?? '—'}</Table.Td>
                    <Table.Td ta="right">{fmtMoney(p.price, p.currency)}</Table.Td>
                    <Table.Td>
                      <Badge variant="light" color={p.source === 'api' ? 'indigo' : 'gray'}>
                        {p.source}
                      </Badge>
                    </Table.Td>
                    <Table.Td>{fmtTime(p.updated_at)}</Table.Td>
                    <Table.Td>
                      {session.can.write && (
                        <Group gap={4} wrap="nowrap">
                          <Button size="xs" variant="subtle" onClick={() => setEditing(p)}>
                            Edit
                          </Button>
                          <Button size="xs" variant="subtle" color="red" onClick={() => setDeleting(p)}>
                            Delete
                          </Button>
                        </Group>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryState>
      <Pager paged={paged} label="products" />
      <Modal
        opened={editing !== null}
        onClose={() => setEditing(null)}
        title={editing === 'new' ? 'New product' : 'Edit product'}
      >
        {editing !== null && (
          <ProductEditor product={editing === 'new' ? null : editing} onDone={() => setEditing(null)} />
        )}
      </Modal>
      <ConfirmModal
        opened={deleting !== null}
        onClose={() => setDeleting(null)}
        title="Delete this product?"
        confirmLabel="Delete"
        onConfirm={() => deleting && del.mutate(deleting.product_id)}
        busy={del.isPending}
        error={del.error}
      >
        {`The catalogue entry ${deleting?.product_id ?? ''} is deleted; orders keep their line items.`}
      </ConfirmModal>
    </Stack>
  );
}
