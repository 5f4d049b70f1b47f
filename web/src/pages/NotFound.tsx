import { Anchor, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';

export default function NotFound() {
  return (
    <Stack>
      <Title order={1} size="h2">
        Page not found
      </Title>
      <Text>
        There is no console page here.{' '}
        <Anchor component={Link} to="/">
          Go to the overview
        </Anchor>
        .
      </Text>
    </Stack>
  );
}
