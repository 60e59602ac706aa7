/** The two task splits: `train` feeds rollouts, `test` feeds validation. */
export type Split = 'train' | 'test';
