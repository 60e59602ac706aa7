import { AppError, ErrorCode } from '../core/app-error';
import { asJobError, refuseDatasetsOfRemote, unknownEnvironment } from './environment-checks';

describe('environment checks shared by the API and the job runner', () => {
  it('name the field, for a 400 at submission', () => {
    expect(unknownEnvironment('nope', ['gomoku', 'math'])).toMatchObject({
      code: ErrorCode.VALIDATION,
      field: 'environment.id',
      message: 'Unknown environment nope (known: gomoku, math)',
    });
    expect(unknownEnvironment('nope', []).message).toBe('Unknown environment nope (known: none)');
    expect(() => refuseDatasetsOfRemote({ id: 'math', url: 'http://env:8080', val_dataset: 'd' })).toThrow(
      expect.objectContaining({ field: 'environment.val_dataset', message: expect.stringMatching(/^environment\.val_dataset: uploaded datasets live on this server/) }),
    );
    expect(() => refuseDatasetsOfRemote({ id: 'math', dataset: 'd' })).not.toThrow();
  });

  it('become the job error `field: message` in the runner, without doubling a field already there', () => {
    expect((asJobError(unknownEnvironment('nope', ['math'])) as Error).message).toBe('environment.id: Unknown environment nope (known: math)');
    const prefixed = new AppError(ErrorCode.VALIDATION, 'environment.dataset: uploaded datasets live on this server', { field: 'environment.dataset' });
    expect(asJobError(prefixed)).toBe(prefixed);
    const plain = new Error('socket hang up');
    expect(asJobError(plain)).toBe(plain);
  });
});
