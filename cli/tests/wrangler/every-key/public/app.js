console.log('every key');
