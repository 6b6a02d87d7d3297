// The calls the client scripts put up for review through `request_approval`; tests/mcp.rs
// knows them.

// The call every approval scenario proposes (each call adds its own `tool_use_id`).
export const DELETE_USERS = {
  name: 'delete_rows',
  args: { table: 'users' },
  description: 'Delete the users inactive for 90 days',
  allowed_decisions: ['approve', 'edit', 'reject'],
};

// Arguments the `invalid` scenario sends, each wrong in its own way.
export const INVALID_ARGUMENTS = [
  { actions: [] },
  { actions: [{ name: 'delete_rows', args: ['users'] }] },
  { actions: [{ name: 'delete_rows', args: {}, allowed_decisions: ['maybe'] }] },
];
