// The questions the client scripts ask through the `question` tool; tests/mcp.rs knows them.
export const QUESTIONS = [
  {
    question: 'Which database should the service use?',
    header: 'Database',
    options: [
      { label: 'Postgres', description: 'the production default' },
      { label: 'SQLite', description: 'one file, no server' },
    ],
  },
  {
    question: 'Which signals should be exported?',
    header: 'Telemetry',
    options: [
      { label: 'Logs', description: '' },
      { label: 'Traces', description: '' },
    ],
    multiple: true,
  },
];
