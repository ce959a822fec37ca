import { parseMemoryRequest } from '../../../src/adapters/model/demo/memory-requests';

/** The demo model's memory phrasings (README's demo table), and the change of mind that is not one. */
describe('the demo model’s memory phrasings', () => {
  it.each([
    ['Remember that my time zone is Europe/Paris', { kind: 'remember', statement: 'my time zone is Europe/Paris' }],
    ['What do you remember about my time zone?', { kind: 'recall', subject: 'my time zone' }],
    ['Please forget about my time zone', { kind: 'forget', subject: 'my time zone' }],
    ['forget that my dog is called Rex', { kind: 'forget', subject: 'my dog is called Rex' }],
  ])('%s', (message, expected) => {
    expect(parseMemoryRequest(message)).toEqual(expected);
  });

  it.each(['forget it, tell me a joke', 'Forget that.', 'forget this'])(
    '"%s" is a change of mind, not an erasure',
    (m) => {
      expect(parseMemoryRequest(m)).toBeNull();
    },
  );
});
