import { Alert, Anchor, Button, Center, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { ApiError, describeError } from '../api/client';
import { useSessionState } from '../api/session';

/**
 * The key is exchanged once for a server-side session (an HttpOnly cookie) and then forgotten: it
 * lives only in this form's state until the request is sent, never in any storage.
 */
export function SignIn({ notice }: { notice?: string }) {
  const { signIn } = useSessionState();
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(key.trim());
      setKey('');
    } catch (err) {
      if (err instanceof ApiError && err.status === 401)
        setError('This API key is not valid (unknown or revoked).');
      else if (err instanceof ApiError && err.status === 403) setError(err.message);
      else setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Center mih="100vh" p="md" component="main">
      <Paper withBorder shadow="sm" p="xl" w="100%" maw={440}>
        <form onSubmit={(e) => void submit(e)} data-testid="signin-form">
          <Stack>
            <Title order={1} size="h2">
              Sign in to the cdp console
            </Title>
            <Text size="sm" c="gray.8">
              Paste an API key of your workspace. The console exchanges it for a session and does not keep it;
              what you can do here follows the key's scopes (a viewer key gets a read-only console).
            </Text>
            {notice && (
              <Alert color="yellow" role="status">
                {notice}
              </Alert>
            )}
            <PasswordInput
              label="API key"
              placeholder="cdp_sk_…"
              value={key}
              onChange={(e) => setKey(e.currentTarget.value)}
              autoComplete="off"
              required
              data-testid="signin-key"
              error={error ?? undefined}
              errorProps={{ 'data-testid': 'signin-error', role: 'alert' }}
            />
            <Button type="submit" loading={busy} disabled={!key.trim()} data-testid="signin-submit">
              Sign in
            </Button>
            <Text size="xs" c="gray.7">
              The first start of the service prints the admin key of workspace <code>default</code>. The API
              reference is at{' '}
              <Anchor href="/docs" size="xs" underline="always">
                /docs
              </Anchor>
              .
            </Text>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
